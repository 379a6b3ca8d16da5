"""detbench against peers and authors on the same files, images and threads (README.md lists them)."""
