"""`python manage.py llm_plan`: size a vLLM deployment for the assistant before renting a GPU."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from assistant.capacity.model_specs import UnknownHardware, find_gpu, find_model, model_from_config
from assistant.capacity.plan import (
    ASSISTANT_CONTEXT_TOKENS,
    ITL_TARGET_MS,
    Load,
    PlanInput,
    format_plan,
    plan,
)


def _think_range(value: str) -> tuple[float, float]:
    low, _, high = value.partition("-")
    try:
        a, b = float(low), float(high or low)
    except ValueError:
        raise argparse.ArgumentTypeError("expected seconds as A-B, e.g. 20-60") from None
    if a < 0 or b < a:
        raise argparse.ArgumentTypeError("expected 0 <= A <= B")
    return a, b


class Command(BaseCommand):
    help = (
        "Capacity plan for serving the assistant with vLLM: weight memory, KV cache per token, "
        "how many conversations fit, requests in flight (Little's law) and the vllm flags."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--model", required=True, help="a known model name or a local config.json / folder"
        )
        parser.add_argument("--gpu", required=True, help="a known GPU name or its memory in GiB")
        parser.add_argument("--weights", choices=["bf16", "fp8", "int4"], default="fp8")
        parser.add_argument("--kv", choices=["bf16", "fp8"], default="fp8")
        parser.add_argument(
            "--context",
            type=int,
            default=ASSISTANT_CONTEXT_TOKENS,
            help="--max-model-len: what one assistant request needs, not the model's maximum",
        )
        parser.add_argument("--users", type=int, required=True, help="users at peak")
        parser.add_argument(
            "--think-seconds",
            type=_think_range,
            default=(20.0, 60.0),
            help="seconds a user reads and types between messages, A-B (default 20-60)",
        )
        parser.add_argument(
            "--reply-seconds", type=float, default=4.0, help="seconds to generate one reply"
        )
        parser.add_argument("--replicas", type=int, default=1)
        parser.add_argument("--tensor-parallel", type=int, default=1, help="GPUs per replica")
        parser.add_argument("--utilization", type=float, default=0.90)
        parser.add_argument("--itl-target-ms", type=float, default=ITL_TARGET_MS)
        parser.add_argument(
            "--shared-prefix",
            type=int,
            default=0,
            help="tokens of rules + price list shared by a business's requests (prefix cache); "
            "0 counts every conversation at full context",
        )
        parser.add_argument(
            "--businesses", type=int, default=1, help="businesses served, each with its prefix"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            source = Path(options["model"])
            model = model_from_config(source) if source.exists() else find_model(options["model"])
            gpu = find_gpu(options["gpu"])
        except (UnknownHardware, KeyError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        if options["shared_prefix"] < 0 or options["shared_prefix"] >= options["context"]:
            raise CommandError("--shared-prefix must be within 0 and --context")
        for name in ("context", "users", "replicas", "tensor_parallel", "businesses"):
            if options[name] < 1:
                raise CommandError(f"--{name.replace('_', '-')} must be at least 1")
        if not 0.1 <= options["utilization"] <= 1.0 or options["reply_seconds"] <= 0:
            raise CommandError("--utilization must be within 0.1-1.0, --reply-seconds above 0")
        think_min, think_max = options["think_seconds"]
        result = plan(
            PlanInput(
                model=model,
                gpu=gpu,
                weights=options["weights"],
                kv=options["kv"],
                context=options["context"],
                load=Load(options["users"], think_min, think_max, options["reply_seconds"]),
                replicas=options["replicas"],
                utilization=options["utilization"],
                tensor_parallel=options["tensor_parallel"],
                itl_target_ms=options["itl_target_ms"],
                shared_prefix=options["shared_prefix"],
                businesses=options["businesses"],
            )
        )
        for line in format_plan(result):
            self.stdout.write(line)
