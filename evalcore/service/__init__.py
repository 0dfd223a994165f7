"""What the service offers besides the run store's readers: named deployments of a saved
decision (:mod:`~evalcore.service.deployments`), production traffic posted to a deployment
(:mod:`~evalcore.service.ingest`) and its replay in the job runner
(:mod:`~evalcore.traffic.posted`). The HTTP API, the client and the dashboard call these same
functions; none of them knows about HTTP."""
