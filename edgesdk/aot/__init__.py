"""Step 5: static memory plan and the ahead-of-time executor."""
