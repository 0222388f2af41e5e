"""Bill one period, fenced: run by `baton run --every 1h billing -- /usr/bin/python3 billing.py`.

Writes the period's invoice lines in one transaction that first calls
baton_fence(name, token, sig, period): a deposed leader's late run is refused
with SQLSTATE BF001 and rolled back whole, and recorded in fence_refusal; an
accepted one is logged with its period for baton verify. DATABASE_URL names
the database (baton fence install --db URL --log installed the fence there). BILLING_WORK_SECONDS stands in for the time the work takes.
"""
import os
import sys
import time

import psycopg2

STALE = "BF001"  # baton_fence: a newer leader has written; roll back

name, token = os.environ["BATON_NAME"], int(os.environ["BATON_TOKEN"])
sig = os.environ.get("BATON_TOKEN_SIG") or None  # set by baton run --fence-key-file
period, node = os.environ["BATON_PERIOD"], os.environ["BATON_NODE"]

lines = [("acme", 1200), ("globex", 3400), ("initech", 560)]  # the period's work
time.sleep(float(os.environ.get("BILLING_WORK_SECONDS", "0")))

conn = psycopg2.connect(os.environ["DATABASE_URL"], application_name=f"{name} {node} token {token}")
try:
    with conn, conn.cursor() as cur:  # one transaction: commit, or roll back on any error
        cur.execute("SELECT baton_fence(%s, %s, %s, %s)", (name, token, sig, period))
        # The fence holds the name's row lock until the commit, so no
        # other fenced writer can bill this period meanwhile.
        cur.execute("SELECT 1 FROM invoice_line WHERE period = %s LIMIT 1", (period,))
        if cur.fetchone() is None:
            cur.executemany(
                "INSERT INTO invoice_line (period, customer, amount_cents, token, node) VALUES (%s, %s, %s, %s, %s)",
                [(period, c, cents, token, node) for c, cents in lines])
except psycopg2.Error as e:
    if e.pgcode != STALE:
        raise
    with conn, conn.cursor() as cur:  # a transaction of its own: the refused one is gone
        cur.execute("INSERT INTO fence_refusal (period, token, node, sqlstate, message) VALUES (%s, %s, %s, %s, %s)",
                    (period, token, node, e.pgcode, e.pgerror.strip()))
    print(f"billing {period}: refused, token {token} is stale: {e.pgerror.strip()}", file=sys.stderr)
    sys.exit(1)
finally:
    conn.close()
print(f"billing {period}: done under token {token}")
