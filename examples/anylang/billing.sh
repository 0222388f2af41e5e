#!/bin/sh
# Bill one period, fenced: run by `baton run --every 1h billing -- sh billing.sh`.
#
# Writes the period's invoice lines with psql in one transaction (-1) that
# first calls baton_fence(name, token, sig, period): a deposed leader's late
# run is refused with SQLSTATE BF001 and rolled back whole, and recorded in
# fence_refusal; an accepted one is logged with its period for baton verify.
# DATABASE_URL names the database (baton fence install --db URL --log). BILLING_WORK_SECONDS
# stands in for the time the work takes.
export PGAPPNAME="$BATON_NAME $BATON_NODE token $BATON_TOKEN"
sleep "${BILLING_WORK_SECONDS:-0}"
out=$(psql "$DATABASE_URL" -X -q -1 -f - -v ON_ERROR_STOP=1 -v VERBOSITY=verbose \
	-v name="$BATON_NAME" -v token="$BATON_TOKEN" -v sig="${BATON_TOKEN_SIG:-}" \
	-v period="$BATON_PERIOD" -v node="$BATON_NODE" 2>&1 <<'SQL'
SELECT baton_fence(:'name', :'token', NULLIF(:'sig', ''), :'period');
-- The fence holds the name's row lock until the commit, so no other
-- fenced writer can bill this period meanwhile.
INSERT INTO invoice_line (period, customer, amount_cents, token, node)
SELECT :'period', c.customer, c.cents, :'token', :'node'
FROM (VALUES ('acme', 1200), ('globex', 3400), ('initech', 560)) AS c (customer, cents)
WHERE NOT EXISTS (SELECT 1 FROM invoice_line WHERE period = :'period');
SQL
) && { echo "billing $BATON_PERIOD: done under token $BATON_TOKEN"; exit 0; }
case $out in
*"ERROR:  BF001:"*) # stale token: psql rolled the transaction back
	psql "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1 -v period="$BATON_PERIOD" -v token="$BATON_TOKEN" \
		-v node="$BATON_NODE" -v message="$out" >/dev/null <<'SQL'
INSERT INTO fence_refusal (period, token, node, sqlstate, message)
VALUES (:'period', :'token', :'node', 'BF001', :'message');
SQL
	echo "billing $BATON_PERIOD: refused, token $BATON_TOKEN is stale: $out" >&2 ;;
*) echo "billing $BATON_PERIOD: $out" >&2 ;;
esac
exit 1
