"""Grade on submit: the grading service, its queue and its workers (docs/design.md, *The service*).

A student's notebook goes to ``attnbook-course serve`` (:mod:`.serve`, a JupyterHub service), which
keeps it and queues its grading in one transaction in the course's PostgreSQL (:mod:`.store`,
:mod:`.queue`: procrastinate's jobs); ``attnbook-course worker`` (:mod:`.worker`, on any number of
machines) grades the student's newest submission with the batch path's judge and writes the outcome
and the feedback page; the student's Assignments tab fetches it through nbgrader's exchange
(:mod:`.exchange`), or ``attnbook-course submit`` (:mod:`.client`) from outside the hub. What the page
shows, and when, is :mod:`.policy`'s.
"""
