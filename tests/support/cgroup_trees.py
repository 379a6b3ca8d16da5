"""cgroup file trees made in a test folder, as /sys/fs/cgroup holds them (v2 files at the top, v1 under controller folders)."""
from pathlib import Path


def fake_tree(tmp_path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text + "\n")
    return tmp_path
