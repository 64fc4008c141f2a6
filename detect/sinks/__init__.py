"""Files: frames, animations, tables, journal, manifest, and the segment directory's rules."""
