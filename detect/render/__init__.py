"""Pictures: boxes, label chips, Waymo's labels and the camera mosaic, drawn as pure functions."""
