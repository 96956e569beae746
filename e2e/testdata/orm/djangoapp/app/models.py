from django.db import models


class Shelf(models.Model):
    name = models.CharField(max_length=40, unique=True)


class Item(models.Model):
    shelf = models.ForeignKey(Shelf, on_delete=models.CASCADE)
    title = models.CharField(max_length=100, db_index=True)
    price = models.DecimalField(max_digits=8, decimal_places=2)
    added = models.DateTimeField(auto_now_add=True)
    done = models.BooleanField(default=False)
    meta = models.JSONField(null=True)
