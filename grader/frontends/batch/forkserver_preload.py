"""What grader batch's forkserver imports before it forks a worker (workers._context): the worker's
module and the engine, torch with it, frozen (grader.imports), so no full collection walks torch's
objects in the forkserver, nor in a worker after the fork.

The forkserver is also made the subreaper of the workers' descendants: a worker killed (at the
deadline, or lost) leaves its sandbox's zygote an orphan, which comes to the forkserver, not to the
machine's pid 1. The forkserver collects every child of its own that ends (multiprocessing.forkserver
waits for any child on SIGCHLD), and says nothing of one it did not fork: it is expected here."""
import signal
import warnings

from grader.imports import import_frozen
from grader.sandbox.processes import adopt_orphans

# Ctrl-C is the parent's to handle (it prints one line and stops the workers). multiprocessing's forkserver
# ignores SIGINT only once its preload is imported: during the import (seconds of torch) a Ctrl-C printed
# the forkserver's own KeyboardInterrupt traceback before "grader: interrupted".
signal.signal(signal.SIGINT, signal.SIG_IGN)
import_frozen("grader.frontends.batch.workers", "grader.pipeline.engine", "grader.catalog")
adopt_orphans()
warnings.filterwarnings("ignore", message="forkserver: waitpid returned unexpected pid")
