"""`edgepick doctor`: from a symptom to its cause, measured, with the fix."""
