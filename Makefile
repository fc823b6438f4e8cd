# Two commands set up a fresh machine and do everything (see README.md):
#   make book   install, fetch data, build the HTML book (warnings are errors), check every page
#   make test   install, run every test
# Instructors: make release, make collect ZIP=download.zip [ROSTER=roster.csv],
#   make grade [SUBMISSIONS=folder] [STUDENT=id] [ASSIGNMENT=id] [STATE=folder] [SHARD=i/N], make gather,
#   make report [STATE=folder], make export [ROSTER=roster.csv], make deadlines, make grader-check,
#   make settings (every ATTNBOOK_* setting: its default and the value in force).
# Maintainers: make lint runs Ruff on every .py file, then mypy on src/attnbook and the grader (pyproject.toml;
#   CI runs it before make test);
#   make a11y checks every page of _build/html with axe-core in headless Chromium (WCAG 2.1 AA; CI runs it
#   after make book; tools/a11y.mjs);
#   make checkpoints [NAMES=...] [DEVICE=cuda] rebuilds the trained models the book loads;
#   make mutants [CHAPTERS=...] and make routes test the hidden cases and the refused routes.
# Cleanup: make clean.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
JOBS   ?= $(shell nproc 2>/dev/null || echo 1)
STATE  ?= .
# On Linux without an NVIDIA GPU, torch comes from PyTorch's CPU index: a few hundred MB instead of PyPI's
# build with several GB of CUDA libraries. `make install TORCH_INDEX=` takes PyPI's (CUDA) build instead.
TORCH_INDEX ?= $(shell [ "$$(uname -s)" = Linux ] && ! command -v nvidia-smi >/dev/null && \
	echo https://download.pytorch.org/whl/cpu)

.PHONY: install data book book-instructor test lint checkpoints release collect grade gather report export deadlines \
	grader-check mutants routes clean a11y settings

$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml autograder/pyproject.toml tools/student_lab.py
	$(PYTHON) -m venv $(VENV)
ifneq ($(TORCH_INDEX),)
	$(PY) -m pip install --quiet --no-deps --retries 1 --timeout 15 --index-url $(TORCH_INDEX) \
		"$$(grep '^torch==' requirements.txt)" || echo "$(TORCH_INDEX) did not answer: torch comes from PyPI"
endif
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-nodeps.txt
	$(PY) -m pip install --quiet --no-deps -e .
	$(PY) -m pip install --quiet --no-deps -e autograder   # the instructor's grader: attnbook-course
	$(PY) tools/student_lab.py   # JupyterLab for students: pages open as notebooks, no instructor panels
	touch $(STAMP)

install: $(STAMP)

data: install
	$(PY) -m attnbook.data fetch
	$(PY) tools/book_assets.py

# A failed build or page check forgets what Sphinx read (_build/.doctrees), so that the next `make book`
# reads every page again and executes the pages that failed (jupyter-cache keeps only clean runs).
# The page check: alt text, no CDN scripts, clean outputs, nothing too wide (tools/lint_pages.py).
# The pages execute JOBS at a time into the jupyter-cache first (tools/execute_pages.py); the build renders them.
book: data
ifeq ($(CI),true)
	rm -rf _build/.jupyter_cache   # CI always executes every notebook
endif
	$(PY) tools/execute_pages.py --jobs $(JOBS) || { rm -rf _build/.doctrees; exit 1; }
	$(VENV)/bin/jupyter-book build . --warningiserror --keep-going || { rm -rf _build/.doctrees; exit 1; }
	$(PY) tools/lint_pages.py _build/html || { rm -rf _build/.doctrees; exit 1; }
	@echo "Open the book: _build/html/index.html"

# The instructor edition: the book plus every chapter's solution notebook, executed (never published), its
# test cells graded with the hidden cases too.
book-instructor: data
	$(PY) tools/instructor_edition.py _build/instructor-config
	ATTNBOOK_HIDDEN_CASES=$(CURDIR)/autograder/hidden \
		$(VENV)/bin/jupyter-book build . --warningiserror --keep-going --path-output _build/instructor \
		--toc _build/instructor-config/_toc.yml --config _build/instructor-config/_config.yml
	@echo "Open the instructor edition: _build/instructor/_build/html/index.html"

# JOBS pytest workers (pytest-xdist), each file on one worker; tests/conftest.py starts the end-to-end files first.
test: install
	$(PY) -m pytest -n $(JOBS) --dist loadfile --no-loadscope-reorder

# The accessibility check's node modules (axe-core, puppeteer-core: exact versions in package-lock.json), for
# Debian's Chromium: no browser is downloaded. `make a11y` checks every page of the built book against
# WCAG 2.0 and 2.1, A and AA, and prints page, rule and element for each violation.
NODE_STAMP := node_modules/.installed
$(NODE_STAMP): package.json package-lock.json
	PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund
	touch $(NODE_STAMP)

a11y: $(NODE_STAMP)
	node tools/a11y.mjs --all _build/html
test: $(NODE_STAMP)  # tests/test_a11y.py runs the check on what the grader writes

# Ruff: pyflakes, pycodestyle, bugbear, pyupgrade and isort rules ([tool.ruff] in pyproject.toml); then mypy on
# src/attnbook and autograder/attnbook_course ([tool.mypy]; a minute or two cold on 2 cores, seconds once
# .mypy_cache is warm).
lint: install
	$(PY) -m ruff check .
	$(PY) -m mypy

# Rebuild the trained models the book loads (src/attnbook/pretrained/files): CPU-hours here, minutes on a
# GPU (make checkpoints DEVICE=cuda); one at a time with NAMES="vit-mnist". Commit the files it writes.
NAMES  ?= all
DEVICE ?= cpu
checkpoints: data
	nice -n 10 $(PY) -m attnbook.pretrained build $(NAMES) --device $(DEVICE)
	$(PY) -m attnbook.pretrained verify

release: install
	$(VENV)/bin/attnbook-course release

# An LMS download (Canvas, Moodle, nbgrader's zip_collect layout) into STATE/submitted/; ASSIGNMENT when its
# notebooks cannot say which, ROSTER to name the students as the course does, ZONE for the zip's times.
# CHECK=1 prints what would be collected and what skipped, and writes nothing.
collect: install
	$(if $(ZIP),,$(error make collect needs ZIP=the downloaded zip))
	$(VENV)/bin/attnbook-course --state $(STATE) collect "$(ZIP)" $(if $(ASSIGNMENT),--assignment $(ASSIGNMENT)) \
		$(if $(ROSTER),--roster "$(ROSTER)") $(if $(ZONE),--zone $(ZONE)) $(if $(CHECK),--check)

# Grades what is new or changed since the last run; STUDENT (and/or ASSIGNMENT) grades those again, and only those.
# SHARD=i/N grades machine i's share of N (one PostgreSQL gradebook, one shared STATE); then make gather.
grade: install
	$(VENV)/bin/attnbook-course --state $(STATE) grade --jobs $(JOBS) $(if $(STUDENT),--student $(STUDENT)) \
		$(if $(ASSIGNMENT),--assignment $(ASSIGNMENT)) $(if $(SHARD),--shard $(SHARD)) $(SUBMISSIONS)

# STATE/grades.csv and STATE/grading.log of a class graded by `make grade SHARD=i/N`, once every shard is done.
gather: install
	$(VENV)/bin/attnbook-course --state $(STATE) gather

# STATE/canvas.csv (Canvas's gradebook import) and STATE/totals.csv, late penalties applied.
export: install
	$(VENV)/bin/attnbook-course --state $(STATE) export $(if $(ROSTER),--roster "$(ROSTER)")

# Check STATE/deadlines.csv alone, as `make grade` reads it: each assignment's due date and policy, or every problem.
deadlines: install
	$(VENV)/bin/attnbook-course --state $(STATE) deadlines

# Every ATTNBOOK_* environment variable the course reads (attnbook.settings): unit, default, the value in force here.
settings: install
	$(VENV)/bin/attnbook-course settings

# The class report of a graded state folder: STATE/report/index.html.
report: install
	$(VENV)/bin/attnbook-course --state $(STATE) report

# Grade the catalogue of right, wrong and hostile answers (in the sandbox, JOBS at once) and check every grade.
# It refuses to run without bubblewrap: the hostile answers attack the machine they run on.
grader-check: install
	rm -rf _build/grader-check
	$(VENV)/bin/attnbook-course catalogue _build/grader-check/submissions
	ATTNBOOK_GRADING_PART_SECONDS=30 $(VENV)/bin/attnbook-course --state _build/grader-check grade --jobs $(JOBS) \
		--require-sandbox _build/grader-check/submissions
	$(VENV)/bin/attnbook-course check _build/grader-check/grades.csv

# Prove the hidden cases: every one-edit mutant of each solution cell graded by its checks (CHAPTERS=ids,
# default all; autograder/mutation/<chapter>.csv and <chapter>-survivors.md, with the rule mutants), and every installed function that does
# a part's whole job found (autograder/refused_routes.csv). CPU-hours for mutants, minutes for routes.
CHAPTERS ?=
mutants: install
	nice -n 10 $(VENV)/bin/attnbook-course mutants $(CHAPTERS)

routes: install
	nice -n 10 $(VENV)/bin/attnbook-course routes

clean:
	rm -rf _build _release submitted autograded feedback results report gradebook.db* grades.csv grading.log \
		canvas.csv totals.csv grading-cache nbgrader-grades.csv shards
