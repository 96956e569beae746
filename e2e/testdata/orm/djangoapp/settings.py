import os

SECRET_KEY = "test"
USE_TZ = True
TIME_ZONE = "Europe/Paris"
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "app"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# client_flag: FOUND_ROWS and MULTI_STATEMENTS|MULTI_RESULTS, which
# mysqlclient (Django's driver) sets and PyMySQL leaves out.
DATABASES = {"default": {"ENGINE": "django.db.backends.mysql", "NAME": os.environ["DJ_DB"], "USER": "root",
                         "HOST": os.environ["DJ_HOST"], "PORT": os.environ["DJ_PORT"],
                         "OPTIONS": {"charset": "utf8mb4", "client_flag": 2 | 65536 | 131072}}}
