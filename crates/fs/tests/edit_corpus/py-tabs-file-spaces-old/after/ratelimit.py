import re
import time


class RateLimiter:
	"""Allows at most `limit` calls per `period` seconds."""

	def __init__(self, limit, period):
		self.limit = limit
		self.period = period
		self.calls = []

	def allow(self):
		now = time.monotonic()
		self.calls = [t for t in self.calls if now - t < self.period]
		if len(self.calls) >= self.limit:
			self.rejected += 1
			return False
		self.calls.append(now)
		return True


SLUG_RE = re.compile(r"[^a-z0-9]+")


def slugify(title):
	slug = SLUG_RE.sub("-", title.lower())
	return slug.strip("-")


def chunks(items, size):
	for start in range(0, len(items), size):
		yield items[start:start + size]
