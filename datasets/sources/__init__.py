"""Where frames come from: a folder of images, video files, live streams. Every source yields LoadedImage items
(datasets/image_folder.py), so what consumes them does not care which kind it reads; docs/cameras.md."""
