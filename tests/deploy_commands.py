"""The commands a team's deployment runs (deploy/compose.yaml, deploy/systemd/), which
tests/integration/jobs/test_workers_apart.py runs for real: tests/unit/test_deploy_files.py checks
that the deployment files name these and nothing else."""

WEB = ["serve", "--web-only"]  # then --host/--port
WORKER = ["worker"]
