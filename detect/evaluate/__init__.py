"""`detect eval` and `detect export coco`: Waymo's labels against the detections, with faster-coco-eval."""
