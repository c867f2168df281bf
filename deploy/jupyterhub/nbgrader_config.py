"""nbgrader settings that every user of the course's JupyterHub shares: the course id and the exchange.

The hub gives every server (students', the instructor's, formgrader's) the folder of this file as
JUPYTER_CONFIG_PATH (jupyterhub_config.py beside it), so nbgrader finds it there; the instructor's
terminal commands find it when this folder is /etc/jupyter, or with the same variable. The course
directory's own nbgrader_config.py adds the grading settings for the instructor.
"""

import os

c = get_config()  # noqa: F821 - nbgrader provides get_config when it loads this file.

# The same id as in the course directory's nbgrader_config.py, and the hub service's name.
c.CourseDirectory.course_id = "kv-cache-eviction"

# The exchange: a folder on this machine that every user can write to, with the sticky bit, made
# once by an administrator: install -d -m 1777 /srv/nbgrader/exchange (README, "On a JupyterHub").
# COURSE_EXCHANGE names another folder (tests/test_hub.py uses a fresh one).
c.Exchange.root = os.environ.get("COURSE_EXCHANGE", "/srv/nbgrader/exchange")

# nbgrader's defaults, which the exchange's safety rests on: each submission's folder name ends in
# a random string, so that no student can guess another's (grading/pipeline/exchange.py).
c.ExchangeSubmit.add_random_string = True
