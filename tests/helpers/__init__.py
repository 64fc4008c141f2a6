"""Helpers the tests share (crafted scenes, ...); no test module imports another."""
