"""python manage.py usage daily|weekly|monthly|session [--agent A] [--model M] [--project SLUG]
[--person USERNAME] [--since DAY] [--until DAY] [--timezone ZONE] [--breakdown] [--by-person] [--json]

Tokens by kind, spend, cache hit rate, sessions, model calls and folds per period, from the same
function as GET /api/projects/{slug}/usage (usage/services.py)."""

import json

from django.core.management.base import BaseCommand, CommandError

from contextviewer.usage import report, services


def _usd(line: dict) -> str:
    text = f"${line['cost_usd']:,.2f}"
    if line["cost_recorded_usd"] and line["cost_estimated_usd"]:
        text += f" ({line['cost_recorded_usd']:,.2f} recorded)"
    elif line["cost_recorded_usd"]:
        text += " recorded"
    elif line["cost_estimated_usd"]:
        text += " est."
    if not line["cost_complete"]:
        text = f">= {text}" if line["cost_usd"] else "unknown"
    return text


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


COLUMNS = ("period", "model", "input", "cache write", "cache read", "output", "reasoning", "cost", "cache hit", "sessions", "calls", "folds")


def render(table: dict, breakdown: bool) -> str:
    rows = []
    for line in [*table["lines"], table["total"]]:
        t = line["tokens"]
        rows.append([line["period"], (line["model"] or "") if breakdown else "", f"{t['input']:,}", f"{t['cache_write']:,}",
                     f"{t['cache_read']:,}", f"{t['output']:,}", "-" if t["reasoning"] is None else f"{t['reasoning']:,}", _usd(line), _rate(line["cache_hit_rate"]),
                     str(line["sessions"]), str(line["model_calls"]), str(line["folds"])])
    columns = [c for c in COLUMNS if breakdown or c != "model"]
    if not breakdown:
        rows = [r[:1] + r[2:] for r in rows]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    fmt = lambda r: "  ".join(v.ljust(w) if i < (2 if breakdown else 1) else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths)))  # noqa: E731
    out = [fmt(list(columns)), *(fmt(r) for r in rows)]
    out.append("")
    out.append(f"Prices: {table['prices']}; 'est.' = list price of the recorded tokens, 'recorded' = the agent's own figure.")
    out.append("reasoning: of output, where the agent records it apart; '-' where none of the calls does.")
    for name in table["unpriced_models"]:
        out.append(f"no price known for {name}: its calls are counted, their cost is not (set CONTEXTVIEWER_USAGE_PRICES)")
    if table["total"]["unmeasured_calls"]:
        out.append(f"{table['total']['unmeasured_calls']} model call(s) with no usage in their log: counted, no tokens or cost")
    return "\n".join(out)


def render_people(people: list[dict]) -> str:
    """Each person's totals, one line each, in the table's columns (the person where the period is)."""
    if not people:
        return "no sessions"
    lines = [{**p["total"], "period": p["person"] or "(no one's import)"} for p in people]
    table = render({"lines": lines[:-1], "total": lines[-1], "prices": "", "unpriced_models": []}, False)
    return "\n".join(table.splitlines()[: len(lines) + 1]).replace("period", "person", 1)


class Command(BaseCommand):
    help = "Usage and spend across sessions per day, week, month or session."
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("period", choices=report.PERIODS)
        parser.add_argument("--agent", default="", help="an agent (format) name, e.g. claude-code")
        parser.add_argument("--model", default="", help="a model name, or part of one")
        parser.add_argument("--project", default="", help="a project's slug")
        parser.add_argument("--person", default="", help="the username whose imports brought the sessions in")
        parser.add_argument("--since", default=None, help="first day, e.g. 2026-01-01 (in --timezone)")
        parser.add_argument("--until", default=None, help="last day, inclusive")
        parser.add_argument("--timezone", default=None, help="the days' time zone (default: the server's TIME_ZONE)")
        parser.add_argument("--breakdown", action="store_true", help="a line per model under each period")
        parser.add_argument("--by-person", action="store_true", help="also each person's totals over the range")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **o):
        try:
            table = services.usage(o["period"], project=o["project"], agent=o["agent"], model=o["model"],
                                   person=o["person"], since=o["since"], until=o["until"], timezone=o["timezone"],
                                   breakdown=o["breakdown"], by_person=o["by_person"])
        except services.BadQuery as exc:
            raise CommandError(f"usage failed: {exc}") from None
        if o["json"]:
            self.stdout.write(json.dumps(table, indent=1))
            return
        self.stdout.write(render(table, o["breakdown"]))
        if o["by_person"]:
            self.stdout.write("\nBy person (the user whose import brought the sessions in), over the whole range:\n")
            self.stdout.write(render_people(table["people"]))
