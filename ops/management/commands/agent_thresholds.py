"""python manage.py agent_thresholds [--client claude-code|codex|both] [--timeout 60]
    [--claude var/agents/claude-code-2.0.57 ...] [--env CLAUDE_CODE_AUTO_COMPACT_WINDOW=150000]
    [--codex var/agents/codex-0.58.0 ...] [--mid-turn]

The real Claude Code and Codex CLIs (pinned, installed by `bin/setup --agents` into var/agents) as
the oracle of the policy lab's auto-compaction thresholds: for each client and each chosen fixture
prefix (ops/agents.py CLAUDE_PREFIXES / CODEX_PREFIXES), bisect on the last response's usage to the
exact token from which the client compacts, and print it next to the lab's value. Each step runs the
real client once, offline, in a throw-away HOME against a fake provider on 127.0.0.1 (about 1 s).

The threshold is given as the rule's count at that point: the bisected last usage + the rule's
estimate of what follows it (Claude Code: round(chars/4) of the prompt and what it attaches, read
from the client's own request; Codex: bytes/4 of the items recorded since, none when a turn starts).
Figures, not a timed test (tests/agents checks the same within 0.5 %).

`--claude FOLDER` (repeatable) measures other Claude Code versions, each installed with
`npm install @anthropic-ai/claude-code@X` into its own folder under var/agents (never globally);
`--env NAME=VALUE` sets a variable for every Claude Code run (CLAUDE_CODE_AUTO_COMPACT_WINDOW). A
threshold outside ±10 % of the lab's is bisected over the whole range, from half the lab's to the window.

`--models M1,M2 [--at 199000]`: no bisection; which models each install compacts at that last usage
(the last prefix resumed with `--model M`, "[1m]" for Claude Code's 1M window; Codex: the model in
its config and turn contexts, before a resumed turn). For Claude Code it says whether the client
summarized (a summarization request) or only wrote its compact_boundary (2.1.332 drops old turns
without a request on its 1M models). How docs/policy-lab.md's "Which models compact on the
threshold" and "Codex's limit per model" were measured.
"""

from __future__ import annotations

import time

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from contextviewer.core.policylab import claude_code, codex
from ops import agents

# A Claude Code session on a model without a configured auto-compact window (claude-opus-4-5): shown
# to check that 2.1.197 leaves such models to reactive compaction (none up to the window).
REACTIVE_ONLY = ("moredip__session-share__0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl", 0)


def prefix_window(prefix) -> int:
    """A bound above any proactive threshold: the window of the prefix's model (200k unless it says 1M)."""
    if "[1m]" in (prefix.model or ""):
        return 1_000_000
    return 400_000 if (prefix.model or "").startswith("gpt-5") else 200_000


class Command(BaseCommand):
    help = "Bisect the real Claude Code and Codex CLIs to their auto-compaction thresholds and compare with the lab's."

    def add_arguments(self, parser):
        parser.add_argument("--client", choices=["claude-code", "codex", "both"], default="both")
        parser.add_argument("--timeout", type=float, default=agents.TIMEOUT, help="seconds per client run")
        parser.add_argument("--claude", action="append", default=[], metavar="FOLDER",
                            help="another Claude Code install (a var/agents folder holding node_modules); repeatable")
        parser.add_argument("--codex", dest="codex_folders", action="append", default=[], metavar="FOLDER",
                            help="another Codex install (a var/agents folder holding node_modules); repeatable")
        parser.add_argument("--mid-turn", action="store_true",
                            help="Codex: measure the check before a tool call's follow-up (the first answer is a shell call "
                                 "reporting the usage) instead of the check before a resumed turn")
        parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="for every Claude Code run")
        parser.add_argument("--models", default="", metavar="M1,M2",
                            help="Claude Code: which of these models compact at --at (no bisection)")
        parser.add_argument("--at", type=int, default=199_000, help="the last usage --models runs at")

    def handle(self, *args, **opts):
        folders = [Path(f).resolve() for f in opts["claude"]]
        for f in folders:
            if not agents.claude_bin(f).exists():
                raise CommandError(f"no Claude Code under {f} (npm install @anthropic-ai/claude-code@VERSION there)")
        codex_folders = [Path(f).resolve() for f in opts["codex_folders"]]
        for f in codex_folders:
            if not agents.codex_bin(f).exists():
                raise CommandError(f"no Codex under {f} (npm install @openai/codex@VERSION there)")
        problem = None if folders or codex_folders else agents.missing_clients()
        if problem:
            raise CommandError(problem)
        self.env = dict(kv.split("=", 1) for kv in opts["env"] if "=" in kv) or None
        self.mid_turn = opts["mid_turn"]
        root = settings.FIXTURES_DIR
        if not root.is_dir():
            raise CommandError(f"shared fixtures not found at {root} (set CONTEXTVIEWER_FIXTURES)")
        timeout = opts["timeout"]
        if opts["models"]:
            models = [m.strip() for m in opts["models"].split(",") if m.strip()]
            if opts["client"] == agents.CODEX:
                return self._codex_models(root, codex_folders or [None], models, opts["at"], timeout)
            return self._models(root, folders or [None], models, opts["at"], timeout)
        rows = []
        if opts["client"] in ("claude-code", "both"):
            lab = claude_code.threshold(200_000)
            for folder in folders or [None]:
                self.folder = folder
                for name, nth in agents.CLAUDE_PREFIXES:
                    prefix = agents.claude_prefix(root / "claude-code" / name, nth)
                    rows.append(self._bisect("claude-code", name, prefix, lab, timeout))
                self._reactive_only(root, timeout)
        if opts["client"] in ("codex", "both"):
            lab = codex.auto_compact_limit(272_000)
            for folder in codex_folders or [None]:
                self.codex_folder = folder
                for name, nth in agents.CODEX_PREFIXES:
                    prefix = agents.codex_prefix(root / "codex" / name, nth)
                    rows.append(self._bisect("codex", name, prefix, lab, timeout))
        self.stdout.write("")
        self.stdout.write(f"{'client':<22} {'fixture prefix':<44} {'model':<26} {'real':>9} {'lab':>9} {'diff':>8}")
        for r in rows:
            self.stdout.write(f"{r['client']:<22} {r['name'][:44]:<44} {r['model'][:26]:<26} {r['real']:>9,} {r['lab']:>9,} "
                              f"{r['diff']:>+7.3f}%")

    folder: Path | None = None
    codex_folder: Path | None = None
    env: dict | None = None
    mid_turn = False

    def _run(self, client, prefix, usage, timeout):
        if client == "claude-code":
            return agents.run_claude(prefix, usage, timeout=timeout, folder=self.folder, extra_env=self.env).check()
        if self.mid_turn:
            return agents.run_codex(prefix, 1_000, timeout=timeout, folder=self.codex_folder, mid_turn=usage).check()
        return agents.run_codex(prefix, usage, timeout=timeout, folder=self.codex_folder).check()

    def _bisect(self, client, name, prefix, lab, timeout):
        t0 = time.monotonic()
        probe = self._run(client, prefix, lab // 2, timeout)
        if probe.compacted:
            raise CommandError(f"{client} compacted {name} at half the lab's threshold ({lab // 2:,})")
        if client == "claude-code":
            tail = agents.claude_rule_tail(probe)
        else:  # mid-turn: the figure is the response's own total (its shell call's output is not counted)
            tail = 0 if self.mid_turn else agents.codex_rule_tail(prefix)
        lo, hi = round(lab * 0.9) - tail, round(lab * 1.1) - tail
        if self._run(client, prefix, lo, timeout).compacted or not self._run(client, prefix, hi, timeout).compacted:
            # Another version's rule: the whole range, from half the lab's threshold to the window.
            lo, hi = lab // 2, max(round(lab * 1.1), prefix_window(prefix)) - tail
            if not self._run(client, prefix, hi, timeout).compacted:
                raise CommandError(f"{client} {probe.version} on {name}: no compaction up to a last usage of {hi:,}")
        steps = []
        usage = agents.bisect(lambda u: self._run(client, prefix, u, timeout), lo, hi, lambda u, c: steps.append((u, c)))
        real = usage + tail
        at = self._run(client, prefix, usage, timeout)
        extra = ""
        if client == "claude-code":
            pre = [line.get("compactMetadata", {}).get("preTokens") for line in at.session_lines
                   if line.get("subtype") == "compact_boundary"]
            extra = f", the client's own count there (compact_boundary preTokens) {pre[0]:,}" if pre and pre[0] else ""
        diff = (real - lab) / lab * 100
        self.stdout.write(
            f"{client} {probe.version}  {name}\n"
            f"  model {prefix.model}; compacts from last usage {usage:,} (not at {usage - 1:,}) + {tail:,} after it "
            f"= {real:,}{extra}\n"
            f"  lab {lab:,}; difference {real - lab:+,} tokens ({diff:+.3f} %); {len(steps) + 4} client runs, "
            f"{time.monotonic() - t0:.0f} s")
        return {"client": f"{client} {probe.version}", "name": name, "model": prefix.model, "real": real, "lab": lab, "diff": diff}

    def _models(self, root, folders, models, usage, timeout):
        name, nth = agents.CLAUDE_PREFIXES[-1]
        base = agents.claude_prefix(root / agents.CLAUDE_CODE / name, nth)
        self.stdout.write(f"{'client':<22} {'model':<30} {'last usage':>11}  compacted")
        for folder in folders:
            for model in models:
                out = agents.run_claude(base.with_model(model), usage, timeout=timeout, folder=folder,
                                        extra_env=self.env).check()
                boundary = any(line.get("subtype") == "compact_boundary" for line in out.session_lines)
                said = "yes, summarized" if out.compacted else "yes, without a summary request" if boundary else "no"
                self.stdout.write(f"{out.client} {out.version:<10} {model:<30} {usage:>11,}  {said}")

    def _codex_models(self, root, folders, models, usage, timeout):
        name, nth = agents.CODEX_PREFIXES[0]
        base = agents.codex_prefix(root / agents.CODEX / name, nth)
        self.stdout.write(f"{'client':<22} {'model':<30} {'last total':>11}  compacted")
        for folder in folders:
            for model in models:
                out = agents.run_codex(base.with_model(model), usage, timeout=timeout, folder=folder).check()
                self.stdout.write(f"{out.client} {out.version:<16} {model:<30} {usage:>11,}  {'yes' if out.compacted else 'no'}")

    def _reactive_only(self, root, timeout):
        if self.env or self.folder:
            return  # checked on the pinned client only
        name, nth = REACTIVE_ONLY
        path = root / "claude-code" / name
        if not path.is_file():
            return
        prefix = agents.claude_prefix(path, nth)
        usage = 199_000
        out = self._run("claude-code", prefix, usage, timeout)
        self.stdout.write(
            f"claude-code {out.version}  {name}\n  model {prefix.model}: last usage {usage:,} (over the lab's "
            f"{claude_code.threshold(200_000):,}): compacted={out.compacted} ({out.detail})")
