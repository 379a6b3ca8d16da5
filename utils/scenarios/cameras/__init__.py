"""benchmark.scenario cameras: N video files or streams as cameras, each read and decoded on a thread of its own,
feeding one shared detector or one per camera, measured over a window (docs/cameras.md#the-camera-scenario)."""
