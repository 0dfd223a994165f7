"""``/deployments`` and ``/deployments/{name}/traffic``: filled in once evalcore.service.deployments exists."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["deployments"])
