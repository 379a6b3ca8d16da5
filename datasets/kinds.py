"""What dataset.path holds, by name: image files, or the frames of video files. A module of its own, importing
nothing, so that step names and the record can name the kinds without loading a decoder."""

IMAGES, VIDEOS = "images", "videos"
