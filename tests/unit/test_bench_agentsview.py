"""The pure helpers of `bench vs-agentsview` (ops/bench/agentsview.py): its percentiles, its table,
and how it reads agentsview's own summary. The benchmark itself is a command, not a timed test."""

import math

from ops.bench import agentsview


def test_percentile_is_the_nearest_rank():
    # 1..20 shuffled: the 50th percentile is the 10th smallest value (ceil(0.5 * 20) = 10), the 95th
    # the 19th (ceil(0.95 * 20) = 19), the 100th the largest; worked out by hand.
    values = [7, 3, 20, 1, 14, 9, 2, 18, 5, 11, 16, 4, 13, 6, 19, 8, 12, 15, 10, 17]
    assert agentsview.percentile(values, 0.5) == 10
    assert agentsview.percentile(values, 0.95) == 19
    assert agentsview.percentile(values, 1.0) == 20
    # 3 values: p50 is the 2nd (ceil 1.5), p95 the 3rd (ceil 2.85); one value is every percentile.
    assert agentsview.percentile([30.0, 10.0, 20.0], 0.5) == 20.0
    assert agentsview.percentile([30.0, 10.0, 20.0], 0.95) == 30.0
    assert agentsview.percentile([4.2], 0.95) == 4.2
    assert math.isnan(agentsview.percentile([], 0.5))


def test_ratio_says_na_rather_than_dividing_by_nothing():
    assert agentsview.ratio(33.5, 9.5) == "3.53x"
    assert agentsview.ratio(1.0, 0.0) == "n/a"


def test_table_lines_up_its_columns():
    text = agentsview.table(["measure", "contextviewer", "agentsview"], [["folder import", "33.50 s", "9.50 s"],
                                                                       ["55 MB session", "3.40 s", "1.26 s"]])
    lines = text.splitlines()
    assert lines[0] == "| measure       | contextviewer | agentsview |"
    assert lines[1] == "|---------------|---------------|------------|"
    assert lines[2] == "| folder import | 33.50 s       | 9.50 s     |"
    assert len({len(line) for line in lines}) == 1


def test_sync_counts_reads_agentsviews_summary():
    # The last lines `agentsview sync` (v0.46.1) printed here on 20 generated sessions, copied as printed.
    printed = ("Preparing sync...\nRunning initial sync...\nSync complete: 45 sessions synced in 584ms\n\n"
               "Database: 20 sessions, 306 messages\n")
    assert agentsview.sync_counts(printed) == (20, 306)
    assert agentsview.sync_counts("Sync complete: 0 sessions synced in 5ms") is None


def test_hits_shown_counts_each_answers_first_page():
    # Our results fragment marks each hit `<li class="hit">` (templates/viewer/index.html); agentsview's
    # search answers {"query": ..., "results": [...]} (as its v0.46.1 answered here).
    ours = b'<ol class="hit-list"><li class="hit"><a>a</a></li><li class="hit"><a>b</a></li></ol>'
    theirs = b'{"query":"parser","results":[{"session_id":"x"},{"session_id":"y"},{"session_id":"z"}]}'
    assert agentsview.hits_shown(ours, theirs) == (2, 3)
    assert agentsview.hits_shown(b"<p>No message matches.</p>", b'{"query":"q","results":null}') == (0, 0)
    assert agentsview.hits_shown(b"", b"not json") == (0, -1)
