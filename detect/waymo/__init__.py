"""Inputs: Waymo segment files (v2 Parquet, v1 TFRecord), their keys, images and labels."""
