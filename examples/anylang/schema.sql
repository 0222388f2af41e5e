-- The billing tables of examples/anylang (after baton fence install --log).
-- invoice_line has no unique key on purpose: the fence alone keeps a
-- deposed leader from billing a period twice. The job connects as a role
-- of its own (billing_job here), which baton fence install --grant
-- billing_job lets call baton_fence, and which needs on these tables:
--   GRANT SELECT, INSERT ON invoice_line, fence_refusal TO billing_job;
--   GRANT USAGE ON SEQUENCE invoice_line_id_seq TO billing_job;
-- and no right on the tables baton_fence and baton_fence_log (the fence log,
-- which only baton_fence writes, and baton verify --fence-db reads).
CREATE TABLE invoice_line (
	id           bigserial PRIMARY KEY,
	period       text   NOT NULL,
	customer     text   NOT NULL,
	amount_cents bigint NOT NULL,
	token        bigint NOT NULL,
	node         text   NOT NULL);
-- Writes the fence refused, recorded outside the refused transaction.
CREATE TABLE fence_refusal (
	period   text   NOT NULL,
	token    bigint NOT NULL,
	node     text   NOT NULL,
	sqlstate text   NOT NULL,
	message  text   NOT NULL);
