import json
import os.path
from pathlib import Path

from utils import join as local_join


def read(name):
    full = os.path.join("/tmp", name)
    data = json.loads("{}")
    p = Path(full)
    p.exists()
    return local_join([full]), data
