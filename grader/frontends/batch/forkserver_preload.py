"""What grader batch's forkserver imports before it forks a worker (workers._context): the worker's
module and the engine, torch with it, frozen (grader.imports), so no full collection walks torch's
objects in the forkserver, nor in a worker after the fork."""
from grader.imports import import_frozen

import_frozen("grader.frontends.batch.workers", "grader.pipeline.engine", "grader.catalog")
