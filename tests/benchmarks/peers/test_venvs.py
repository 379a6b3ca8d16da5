"""benchmarks/peers/venvs.py: which Python a peer's venv is made from, the steps it installs once, and the
environment a peer runs in. A fake interpreter stands in for python3.11 (its venv's `pip` only notes what it was
asked), so nothing is downloaded."""
import json
import stat

import pytest

from benchmarks.peers import venvs

SPEC = venvs.VenvSpec("peer", (("peer-package==1.0", "onnx"),))


def executable(path, text):
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def fake_python(tmp_path, monkeypatch):
    """An interpreter that says it is 3.11 and makes venvs whose python notes each `-m pip install` in pip.log
    (and fails a step that names `broken`)."""
    pip = ('case "$*" in *broken*) exit 1;; esac\n'
           f'echo "$@" >> {tmp_path / "pip.log"}\n')
    interpreter = executable(tmp_path / "python3.11", (
        'if [ "$1" = --version ]; then echo "Python 3.11.9"; exit 0; fi\n'
        'mkdir -p "$3/bin"\n'
        f'cat > "$3/bin/python" <<"EOF"\n#!/bin/sh\n{pip}EOF\n'
        'chmod +x "$3/bin/python"\n'))
    monkeypatch.setenv(venvs.PYTHON_VARIABLE, str(interpreter))
    return tmp_path / "pip.log"


def test_a_venv_is_made_from_the_stated_python_and_each_step_runs_once(tmp_path, fake_python):
    folder = tmp_path / "peers" / "peer"
    python = venvs.ensure_venv(folder, SPEC, skip_install=False)
    assert python == folder / "bin" / "python" and python.exists()
    assert fake_python.read_text().splitlines() == ["-m pip install torch==2.14.1 torchvision==0.29.1",
                                                    "-m pip install peer-package==1.0 onnx"]
    assert (tmp_path / "peers" / "peer-install.log").exists()  # pip's output beside the folder
    venvs.ensure_venv(folder, SPEC, skip_install=False)
    assert len(fake_python.read_text().splitlines()) == 2  # a second run installs nothing
    grown = venvs.VenvSpec("peer", SPEC.steps + (("extra",),))
    venvs.ensure_venv(folder, grown, skip_install=False)
    assert fake_python.read_text().splitlines()[2:] == ["-m pip install extra"]  # a step added later runs alone


def test_a_spec_without_torch_installs_only_its_own_steps_into_a_venv_made_by_hand(tmp_path, fake_python):
    """A package that runs no torch (NudeNet, rapid_layout) is not given torch's pair; a venv made before the
    steps were recorded takes the steps once (pip finds them satisfied) and is then left alone."""
    folder = tmp_path / "by-hand"
    (folder / "bin").mkdir(parents=True)
    executable(folder / "bin" / "python", f'echo "$@" >> {fake_python}\n')
    spec = venvs.VenvSpec("package", (("package==1.2",),), torch=False)
    venvs.ensure_venv(folder, spec, skip_install=False)
    venvs.ensure_venv(folder, spec, skip_install=False)
    assert fake_python.read_text().splitlines() == ["-m pip install package==1.2"]
    assert venvs.steps_to_run(folder, spec) == []


def test_a_step_that_fails_names_its_log_and_is_not_recorded(tmp_path, fake_python):
    folder = tmp_path / "peer"
    with pytest.raises(venvs.PeerSetupError, match="pip install broken failed.*peer-install.log"):
        venvs.ensure_venv(folder, venvs.VenvSpec("peer", (("broken",),)), skip_install=False)
    recorded = json.loads((folder / venvs.STEPS_FILE).read_text())
    assert recorded == [list(venvs.TORCH)]
    assert venvs.steps_to_run(folder, venvs.VenvSpec("peer", (("broken",),))) == [("broken",)]


def test_skip_install_uses_a_venv_as_it_is(tmp_path, fake_python):
    folder = tmp_path / "by-hand"
    (folder / "bin").mkdir(parents=True)
    executable(folder / "bin" / "python", "exit 0\n")
    assert venvs.ensure_venv(folder, SPEC, skip_install=True) == folder / "bin" / "python"
    assert not fake_python.exists() and not (tmp_path / "by-hand-install.log").exists()


def test_the_peer_python_must_be_3_11(tmp_path, monkeypatch):
    monkeypatch.setenv(venvs.PYTHON_VARIABLE, str(executable(tmp_path / "python", 'echo "Python 3.10.4"\n')))
    with pytest.raises(venvs.PeerSetupError, match=f"says Python 3.10.4.*{venvs.PYTHON_VARIABLE}"):
        venvs.peer_interpreter()
    monkeypatch.setenv(venvs.PYTHON_VARIABLE, str(tmp_path / "absent"))
    with pytest.raises(venvs.PeerSetupError, match="is not found"):
        venvs.peer_interpreter()
    monkeypatch.setenv(venvs.PYTHON_VARIABLE, str(executable(tmp_path / "python3.11", 'echo "Python 3.11.0"\n')))
    assert venvs.peer_interpreter() == str(tmp_path / "python3.11")


def test_a_venv_that_must_exist_names_the_script_that_makes_one(tmp_path):
    with pytest.raises(venvs.PeerSetupError, match="no peer environment at .*: some_script.py makes one"):
        venvs.existing_venv(tmp_path / "absent", "some_script.py")


def test_a_peer_runs_without_detbench_on_its_path():
    base = {"PYTHONPATH": "/work/detbench", "HOME": "/home/x", "MPLBACKEND": "TkAgg"}
    env = venvs.peer_environment(base, {"YOLO_OFFLINE": "1", "HOME": "/tmp/home"})
    assert "PYTHONPATH" not in env and env["MPLBACKEND"] == "Agg" and env["KINETO_LOG_LEVEL"] == "5"
    assert env["YOLO_OFFLINE"] == "1" and env["HOME"] == "/tmp/home"  # the peer's own settings come last
    assert base == {"PYTHONPATH": "/work/detbench", "HOME": "/home/x", "MPLBACKEND": "TkAgg"}  # left as it was
