-- The billing tables of examples/anylang (after baton fence install).
-- invoice_line has no unique key on purpose: the fence alone keeps a
-- deposed leader from billing a period twice.
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
