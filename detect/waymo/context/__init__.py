"""What Waymo records around the camera images: each frame's conditions, each camera's calibration,
the 3D labels, and the range of every 2D box drawn from them."""
