"""``/evaluations``: filled in with evalcore.service.evaluations."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["evaluations"])
