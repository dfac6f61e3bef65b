"""The scripted model server: the one stand-in of the conformance runs (ops/drivers/), a provider on
127.0.0.1 that answers agents from a plan and records every request they sent."""
