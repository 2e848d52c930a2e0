"""Workers: environment managers, collectors, learner, evaluators. Shared by serial and parallel modes."""
from sparring.worker.chunk import Chunk
from sparring.worker.collector import SampleCollector
from sparring.worker.evaluator import EvalResult, Evaluator
from sparring.worker.learner import Learner
