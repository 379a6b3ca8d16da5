"""Small images made in the test: no file, no decoding."""
import numpy as np


def random_images() -> list[np.ndarray]:
    """Two seeded BGR images of other shapes: a wide 90x160 and a tall 200x100."""
    rng = np.random.default_rng(0)
    return [rng.integers(0, 255, (90, 160, 3), dtype=np.uint8), rng.integers(0, 255, (200, 100, 3), dtype=np.uint8)]
