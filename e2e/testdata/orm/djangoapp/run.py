"""Django against a server: migrate (auth, contenttypes and a small app),
ORM writes, aggregates, time zone lookups (CONVERT_TZ), JSON lookups and
introspection. Usage: DJ_HOST=.. DJ_PORT=.. DJ_DB=.. run.py. Django runs
on PyMySQL as MySQLdb. Prints OK when every check held."""
import datetime
import decimal
import os
import shutil
import sys

import pymysql

pymysql.install_as_MySQLdb()
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
shutil.rmtree(os.path.join(here, "app", "migrations"), ignore_errors=True)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings")
import django  # noqa: E402

django.setup()
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.db.models import Count, Sum  # noqa: E402
from django.db.models.functions import Coalesce  # noqa: E402

call_command("makemigrations", "app", verbosity=0)
call_command("migrate", verbosity=0)
from app.models import Item, Shelf  # noqa: E402

assert not connection.mysql_is_mariadb
assert connection.features.has_zoneinfo_database
s = Shelf.objects.create(name="top")
Item.objects.create(shelf=s, title="a", price=decimal.Decimal("1.50"), meta={"k": [1, 2]})
Item.objects.bulk_create([Item(shelf=s, title="b%d" % i, price=i) for i in range(5)])
assert Item.objects.count() == 6
agg = Item.objects.aggregate(t=Coalesce(Sum("price"), decimal.Decimal(0)))
assert agg["t"] == decimal.Decimal("11.50"), agg
year = datetime.datetime.now(datetime.timezone.utc).year
assert Item.objects.filter(added__year__gte=year - 1).count() == 6
assert list(Shelf.objects.annotate(n=Count("item")).values_list("name", "n")) == [("top", 6)]
assert Item.objects.filter(meta__k__contains=1).count() == 1
Item.objects.filter(title="a").update(done=True)
assert Item.objects.get(done=True).title == "a"
Item.objects.filter(title__startswith="b").delete()
assert Item.objects.count() == 1
with connection.cursor() as c:
    tables = connection.introspection.table_names(c)
    assert {"app_item", "app_shelf", "auth_user", "django_migrations"} <= set(tables), tables
    desc = [f.name for f in connection.introspection.get_table_description(c, "app_item")]
    assert desc == ["id", "title", "price", "added", "done", "meta", "shelf_id"], desc
    cons = connection.introspection.get_constraints(c, "app_shelf")
    assert any(v["unique"] and v["columns"] == ["name"] for v in cons.values()), cons
print("OK")
