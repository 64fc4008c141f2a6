"""Helpers the tests share (crafted scenes, results folders, the command's output, peak memory); no test
module imports another."""
