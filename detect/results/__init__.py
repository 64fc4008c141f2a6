"""The results folder, written and read back: frames, animations, tables, journal, manifest and the
records beside them (typed, with their layout version), and the segment directory's rules."""
