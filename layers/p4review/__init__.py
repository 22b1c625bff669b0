"""p4review: automated code review for Perforce changelists."""
