"""API operations for imports and jobs."""
