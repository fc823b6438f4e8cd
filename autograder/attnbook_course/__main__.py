"""``python -m attnbook_course``: the command line ``attnbook-course`` (:mod:`.course`)."""

import sys

from .course import main

sys.exit(main())
