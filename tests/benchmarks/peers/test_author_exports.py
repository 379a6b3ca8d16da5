"""benchmarks/peers/author_exports.py: each author's package has its driver and one venv spec."""
from benchmarks.peers import venvs
from benchmarks.peers.author_exports import PEERS


def test_every_package_names_a_driver_that_exists_and_a_venv_of_its_own():
    assert all((venvs.DRIVERS / peer.driver).is_file() for peer in PEERS.values())
    assert len({peer.driver for peer in PEERS.values()}) == len(PEERS)
    assert [peer.venv.name for peer in PEERS.values()] == list(PEERS)  # the venv's folder is <cache>/<package>
    assert PEERS["ultralytics"].venv is venvs.ULTRALYTICS  # the one Ultralytics venv every script shares
