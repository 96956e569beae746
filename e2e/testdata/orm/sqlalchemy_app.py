"""SQLAlchemy 2 against a server: create_all, ORM inserts, updates,
deletes, joins and aggregates, then reflection. Usage:
sqlalchemy_app.py HOST PORT DB. Prints OK when every check held."""
import datetime
import decimal
import sys

from sqlalchemy import (Boolean, DateTime, ForeignKey, MetaData, Numeric, String, Text, create_engine, func,
                        inspect, select)
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

host, port, db = sys.argv[1:4]
eng = create_engine(f"mysql+pymysql://root@{host}:{port}/{db}")


class Base(DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "author"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(50), index=True, unique=True)
    born: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=True)
    books = relationship("Book", back_populates="author")


class Book(Base):
    __tablename__ = "book"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(100))
    price: Mapped[decimal.Decimal] = mapped_column(Numeric(8, 2))
    in_print: Mapped[bool] = mapped_column(Boolean, default=True)
    blurb: Mapped[str] = mapped_column(Text, nullable=True)
    author_id: Mapped[int] = mapped_column(ForeignKey("author.id"))
    author = relationship("Author", back_populates="books")


Base.metadata.drop_all(eng)
Base.metadata.create_all(eng)
with Session(eng) as s:
    a = Author(name="Ursula", born=datetime.datetime(1929, 10, 21, 12, 0, 0))
    s.add(a)
    s.add_all([Book(title="Earthsea", price=decimal.Decimal("9.99"), author=a),
               Book(title="Dispossessed", price=decimal.Decimal("12.50"), in_print=False, blurb="x" * 300, author=a)])
    s.commit()
    assert a.id == 1, a.id
    rows = s.execute(select(Book.title, Book.price, Author.name).join(Author).order_by(Book.id)).all()
    assert [tuple(r) for r in rows] == [("Earthsea", decimal.Decimal("9.99"), "Ursula"),
                                         ("Dispossessed", decimal.Decimal("12.50"), "Ursula")], rows
    total = s.execute(select(func.coalesce(func.sum(Book.price), 0))).scalar()
    assert total == decimal.Decimal("22.49"), total
    none = s.execute(select(func.coalesce(func.sum(Book.price), 0)).where(Book.id > 99)).scalar()
    assert str(none) == "0.00", none
    b = s.get(Book, 1)
    b.price = decimal.Decimal("10.00")
    s.commit()
    s.delete(s.get(Book, 2))
    s.commit()
    assert s.execute(select(func.count()).select_from(Book)).scalar() == 1
    assert s.get(Book, 1).price == decimal.Decimal("10.00")
    assert s.get(Author, 1).born == datetime.datetime(1929, 10, 21, 12, 0, 0)

insp = inspect(eng)
assert {"author", "book"} <= set(insp.get_table_names()), insp.get_table_names()
cols = [(c["name"], str(c["type"]), c["nullable"]) for c in insp.get_columns("book")]
assert cols == [("id", "INTEGER", False), ("title", "VARCHAR(100)", False), ("price", "DECIMAL(8, 2)", False),
                ("in_print", "TINYINT", False), ("blurb", "TEXT", True), ("author_id", "INTEGER", False)], cols
assert insp.get_pk_constraint("author")["constrained_columns"] == ["id"]
idx = insp.get_indexes("author")
assert [(i["name"], i["column_names"], i["unique"]) for i in idx] == [("ix_author_name", ["name"], True)], idx
md = MetaData()
md.reflect(eng, only=["author", "book"])
assert sorted(md.tables) == ["author", "book"], md.tables
assert md.tables["author"].c.name.type.length == 50
print("OK")
