"""`python manage.py assistant_eval [--base-url URL --model NAME] [thresholds] [--compare-…]`."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from assistant.eval.runner import Golden, Report, eval_client, load_golden, run

ROWS = (
    ("escalation accuracy", "escalation_accuracy", "{:.3f}"),
    ("action accuracy", "action_accuracy", "{:.3f}"),
    ("JSON validity", "json_validity", "{:.3f}"),
    ("price accuracy", "price_accuracy", "{:.3f}"),
    ("wrong-amount rate", "wrong_amount_rate", "{:.3f}"),
    ("wrong amounts", "wrong_amounts", "{}"),
    ("  of which in no list", "wrong_unlisted", "{}"),
    ("summary (handoff facts)", "summary", "{:.3f}"),
    ("latency p50 (ms)", "latency_p50_ms", "{:.1f}"),
    ("latency p95 (ms)", "latency_p95_ms", "{:.1f}"),
    ("no answer (model down)", "no_answer", "{}"),
)


class Command(BaseCommand):
    help = (
        "Score an assistant backend on the golden conversations (assistant/eval/golden/): "
        "escalation, action and price accuracy, amounts a right reply could not contain (the "
        "eval's own judge, not the guardrail), JSON validity, latency; per category and per "
        "business. "
        "Without --base-url it scores the offline catalogue assistant. Exits non-zero when a "
        "given threshold is missed or, with --compare-base-url, when the candidate (--base-url) "
        "regresses against the baseline (--compare-base-url) beyond --tolerance."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--base-url", default="", help="candidate endpoint (OpenAI API)")
        parser.add_argument("--model", default="", help="model name (default LLM_MODEL)")
        parser.add_argument("--api-key", default="", help="default LLM_API_KEY")
        parser.add_argument(
            "--structured-output",
            choices=["json_schema", "json_object"],
            default=None,
            help="json_schema (vLLM) or json_object (llama.cpp); default LLM_STRUCTURED_OUTPUT",
        )
        parser.add_argument("--compare-base-url", default="", help="baseline endpoint")
        parser.add_argument("--compare-model", default="", help="baseline model name")
        parser.add_argument("--compare-api-key", default="")
        parser.add_argument(
            "--compare-structured-output", choices=["json_schema", "json_object"], default=None
        )
        parser.add_argument("--tolerance", type=float, default=0.02)
        parser.add_argument("--min-escalation-accuracy", type=float, default=None)
        parser.add_argument(
            "--max-invented-price-rate",
            type=float,
            default=None,
            help="the most replies with a wrong amount, as a share (the judge's figure)",
        )
        parser.add_argument("--min-json-validity", type=float, default=None)
        parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
        parser.add_argument("--concurrency", type=int, default=1)
        parser.add_argument("--no-stream", action="store_true")
        parser.add_argument(
            "--golden", type=Path, default=None, help="another golden folder or file"
        )
        parser.add_argument(
            "--no-breakdown", action="store_true", help="no per-category/business tables"
        )
        parser.add_argument("--limit", type=int, default=0, help="only the first N cases")
        parser.add_argument("--case", action="append", default=[], help="only this case id")
        parser.add_argument("--max-tokens", type=int, default=512)
        parser.add_argument("--json", action="store_true", help="print the summary as JSON")
        parser.add_argument("--show-misses", action="store_true", help="list wrong cases")

    def handle(self, *args: Any, **options: Any) -> None:
        quiet = options["verbosity"] < 2
        # One log line per decision and per HTTP request would drown the table.
        loggers = [logging.getLogger(name) for name in ("assistant", "httpx", "httpx2")]
        levels = [logger.level for logger in loggers]
        try:
            if quiet:
                for logger in loggers:
                    logger.setLevel(logging.WARNING)
            self._run(options)
        finally:
            for logger, level in zip(loggers, levels, strict=True):
                logger.setLevel(level)

    def _run(self, options: dict[str, Any]) -> None:
        golden = load_golden(options["golden"])
        cases = [c for c in golden.cases if not options["case"] or c.id in options["case"]]
        if options["limit"]:
            cases = cases[: options["limit"]]
        if not cases:
            raise CommandError("no golden case selected")
        golden = replace(golden, cases=tuple(cases))
        candidate = self._evaluate(golden, options, "")
        baseline = None
        if options["compare_base_url"]:
            baseline = self._evaluate(golden, options, "compare_")
        reports = [r for r in (baseline, candidate) if r is not None]
        if options["json"]:
            self.stdout.write(json.dumps([r.summary() for r in reports], indent=1))
        else:
            # The breakdowns first: a log's tail (CI, gpu_check) keeps the headline table.
            if not options["no_breakdown"]:
                self._breakdown(candidate)
            self._table(golden, reports)
        if options["show_misses"]:
            self._misses(candidate)
        problems = self._thresholds(candidate, options)
        if baseline is not None:
            problems += self._regressions(baseline, candidate, options["tolerance"])
        if problems:
            for problem in problems:
                self.stderr.write(f"FAIL: {problem}")
            raise CommandError(f"{len(problems)} check(s) failed", returncode=1)
        self.stdout.write("OK")

    def _evaluate(self, golden: Golden, options: dict[str, Any], prefix: str) -> Report:
        base_url = options[f"{prefix}base_url"]
        if not base_url:
            return run(golden, None, "catalogue", options["concurrency"])
        model = options[f"{prefix}model"] or settings.LLM_MODEL
        mode = options[f"{prefix}structured_output"] or settings.LLM_STRUCTURED_OUTPUT
        client = eval_client(
            base_url,
            model,
            mode,
            api_key=options[f"{prefix}api_key"] or settings.LLM_API_KEY,
            timeout=options["timeout"],
            stream=not options["no_stream"],
            max_tokens=options["max_tokens"],
        )
        return run(golden, client, f"{model} ({mode})", options["concurrency"])

    def _table(self, golden: Golden, reports: list[Report]) -> None:
        names = ["baseline", "candidate"] if len(reports) == 2 else ["result"]
        self.stdout.write(
            f"assistant eval: {len(golden.cases)} conversations, {len(golden.knowledge)} businesses"
        )
        header = f"{'':26}" + "".join(f"{n:>24}" for n in names)
        self.stdout.write(header)
        self.stdout.write(f"{'backend':26}" + "".join(f"{r.name[:23]:>24}" for r in reports))
        summaries = [r.summary() for r in reports]
        for label, key, fmt in ROWS:
            cells = "".join(f"{fmt.format(s[key]):>24}" for s in summaries)
            self.stdout.write(f"{label:26}{cells}")

    def _breakdown(self, report: Report) -> None:
        """Where the backend fails: the figures per category and per business."""
        for title, groups in (
            ("category", report.by_category()),
            ("business", report.by_business()),
            ("language", report.by_language()),
        ):
            self.stdout.write(
                f"{'by ' + title:20}{'cases':>6}{'escal.':>8}{'action':>8}{'price':>8}"
                f"{'priced':>8}{'wrong':>7}"
            )
            for name, s in groups.items():
                price = f"{s['price_accuracy']:.2f}" if s["priced_cases"] else "-"
                self.stdout.write(
                    f"{name:20}{s['cases']:>6}{s['escalation_accuracy']:>8.2f}"
                    f"{s['action_accuracy']:>8.2f}{price:>8}"
                    f"{s['priced_cases']:>8}{s['wrong_amounts']:>7}"
                )
            self.stdout.write("")

    def _misses(self, report: Report) -> None:
        for r in report.results:
            if r.ok and r.summary_ok is not False:
                continue
            expected = f"{r.case.expected_action}/{r.case.expected_reason or '-'}"
            self.stdout.write(
                f"  {r.case.id} [{', '.join(r.case.categories)}]: expected {expected}, "
                f"got {r.action}/{r.reason or '-'}"
                f"{' WRONG AMOUNT ' + '; '.join(r.invented) if r.invented else ''}"
                f"{' MISSING ' + ', '.join(r.missing) if r.missing else ''}"
                f"{' SUMMARY LACKS ' + ', '.join(r.summary_missing) if r.summary_missing else ''}"
            )

    def _thresholds(self, report: Report, options: dict[str, Any]) -> list[str]:
        problems = []
        if (m := options["min_escalation_accuracy"]) is not None and report.escalation_accuracy < m:
            problems.append(f"escalation accuracy {report.escalation_accuracy:.3f} < {m}")
        if (m := options["max_invented_price_rate"]) is not None and report.invented_price_rate > m:
            problems.append(f"invented-price rate {report.invented_price_rate:.3f} > {m}")
        if (m := options["min_json_validity"]) is not None and report.json_validity < m:
            problems.append(f"JSON validity {report.json_validity:.3f} < {m}")
        return problems

    def _regressions(self, baseline: Report, candidate: Report, tolerance: float) -> list[str]:
        problems = []
        if candidate.escalation_accuracy < baseline.escalation_accuracy - tolerance:
            problems.append(
                f"candidate refused: escalation accuracy {candidate.escalation_accuracy:.3f} vs "
                f"baseline {baseline.escalation_accuracy:.3f} (tolerance {tolerance})"
            )
        if candidate.invented_price_rate > baseline.invented_price_rate + tolerance:
            problems.append(
                f"candidate refused: invented-price rate {candidate.invented_price_rate:.3f} vs "
                f"baseline {baseline.invented_price_rate:.3f} (tolerance {tolerance})"
            )
        return problems
