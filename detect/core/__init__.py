"""The base layer: records keyed with Waymo's names, cameras, errors, the segment-name rule, lazy TensorFlow."""
