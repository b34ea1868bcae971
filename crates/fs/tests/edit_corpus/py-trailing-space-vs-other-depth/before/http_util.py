"""Small HTTP helpers with retries."""

import time
import urllib.error
import urllib.request

DEFAULT_TIMEOUT = 10


def fetch(url, attempts=3, timeout=DEFAULT_TIMEOUT):
    for attempt in range(attempts):
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                return response.read()
        except urllib.error.URLError:
            if attempt == attempts - 1:
                raise
            time.sleep(2 ** attempt)


class Client:
    def __init__(self, base_url, attempts=3, timeout=DEFAULT_TIMEOUT):
        self.base_url = base_url.rstrip("/")
        self.attempts = attempts
        self.timeout = timeout

    def get(self, path):
        url = f"{self.base_url}/{path.lstrip('/')}"
        attempts, timeout = self.attempts, self.timeout
        for attempt in range(attempts):
            try:
                with urllib.request.urlopen(url, timeout=timeout) as response:
                    return response.read()
            except urllib.error.URLError:
                if attempt == attempts - 1:
                    raise 
                time.sleep(2 ** attempt)

    def get_json(self, path):
        import json

        return json.loads(self.get(path))
