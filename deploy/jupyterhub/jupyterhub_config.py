"""JupyterHub for the course: a Unix user per person, nbgrader's exchange, formgrader as a hub service.

Copy this folder to /etc/jupyterhub/ and start the hub as root from there (README, "On a
JupyterHub"):

    cd /etc/jupyterhub && jupyterhub -f jupyterhub_config.py

Users log in with their Unix account and password (PAM). Each gets a JupyterLab server of their own
that runs as that Unix user (LocalProcessSpawner), which is what lets nbgrader's exchange tell
students apart. The instructor's clone of the course runs formgrader (``python -m
grading.pipeline.formgrader --hub``, with the course's Content-Security-Policy) as the hub service
``/services/kv-cache-eviction/``, open to the instructors only.

Settings come from the environment, with the defaults in brackets (tests/test_hub.py sets them all):

    COURSE_DIRECTORY        the instructor's own clone of the course: source/, the gradebook
                            [/home/instructor/kv-cache-eviction]
    COURSE_PYTHON           the Python that runs every server and kernel, in a clone every user can
                            read (its .venv has the course package) [/opt/kv-cache-eviction/.venv/bin/python]
    COURSE_INSTRUCTOR       the Unix user who owns COURSE_DIRECTORY and runs formgrader [instructor]
    COURSE_STUDENT_GROUP    the Unix group whose members may log in as students [students]
    COURSE_EXCHANGE         nbgrader's exchange (nbgrader_config.py beside this file) [/srv/nbgrader/exchange]
    COURSE_HUB_STATE        the hub's database, cookie secret and proxy pid [/srv/jupyterhub]
    COURSE_HUB_URL          where the hub listens [http://127.0.0.1:8000]: put a TLS proxy in front of it
    COURSE_HUB_PORT, COURSE_PROXY_API_PORT, COURSE_FORMGRADER_PORT
                            the hub's internal ports on 127.0.0.1 [8081, 8001, 9999]
"""

import os
from pathlib import Path

c = get_config()  # noqa: F821 - JupyterHub provides get_config when it loads this file.

COURSE = "kv-cache-eviction"  # The course id of nbgrader_config.py, and the service's name.
HERE = str(Path(__file__).resolve().parent)
DIRECTORY = os.environ.get("COURSE_DIRECTORY", "/home/instructor/kv-cache-eviction")
PYTHON = os.environ.get("COURSE_PYTHON", "/opt/kv-cache-eviction/.venv/bin/python")
INSTRUCTOR = os.environ.get("COURSE_INSTRUCTOR", "instructor")
STATE = os.environ.get("COURSE_HUB_STATE", "/srv/jupyterhub")
LOCAL = "127.0.0.1"
# What every server of the course needs in its environment: the course's Python first on PATH (its
# terminals run nbgrader and python -m grading.grade), nbgrader_config.py beside this file, and the
# exchange it names when the hub was told another one.
SHARED = {"PATH": f"{os.path.dirname(PYTHON)}:/usr/local/bin:/usr/bin:/bin", "JUPYTER_CONFIG_PATH": HERE,
          **{name: os.environ[name] for name in ("COURSE_EXCHANGE",) if name in os.environ}}

# Where the hub listens; its own API and the proxy's stay on this machine's loopback.
c.JupyterHub.bind_url = os.environ.get("COURSE_HUB_URL", "http://127.0.0.1:8000")
c.JupyterHub.hub_ip = LOCAL
c.JupyterHub.hub_port = int(os.environ.get("COURSE_HUB_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = f"http://{LOCAL}:{os.environ.get('COURSE_PROXY_API_PORT', '8001')}"
c.ConfigurableHTTPProxy.pid_file = f"{STATE}/jupyterhub-proxy.pid"
c.JupyterHub.db_url = f"sqlite:///{STATE}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = f"{STATE}/jupyterhub_cookie_secret"

# Unix accounts: the instructor and the members of the students' group log in with their password.
c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allowed_users = {INSTRUCTOR}
c.LocalAuthenticator.allowed_groups = {os.environ.get("COURSE_STUDENT_GROUP", "students")}

# Each user's JupyterLab runs as that Unix user, in their home folder, on the loopback.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [PYTHON, "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.ip = LOCAL
c.Spawner.environment = dict(SHARED)
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120

# Formgrader, as the instructor, in the course directory, for the members of formgrade-<course>:
# nbgrader's convention for the group, which its course list looks for.
c.JupyterHub.services = [{
    "name": COURSE,
    "url": f"http://{LOCAL}:{os.environ.get('COURSE_FORMGRADER_PORT', '9999')}",
    "command": [PYTHON, "-m", "grading.pipeline.formgrader", "--hub"],
    "user": INSTRUCTOR,
    "cwd": DIRECTORY,
    "environment": {**SHARED, "JUPYTERHUB_DEFAULT_URL": "/lab"},
    "oauth_no_confirm": True,
}]
c.JupyterHub.load_groups = {f"formgrade-{COURSE}": {"users": [INSTRUCTOR]}}
c.JupyterHub.load_roles = [{
    "name": f"formgrade-{COURSE}",
    "groups": [f"formgrade-{COURSE}"],
    "scopes": [f"access:services!service={COURSE}", "list:services", f"read:services!service={COURSE}"],
}]
