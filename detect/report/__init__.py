"""`detect report`: static web pages of a segment's and a run's results."""
