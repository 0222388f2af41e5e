package batonprom_test

import (
	"github.com/batonhq/baton/internal/batontest"
)

// The root package's timings and helpers.
const (
	lease  = batontest.Lease
	renew  = batontest.Renew
	margin = batontest.Margin
	poll   = batontest.Poll
)

type won = batontest.Won

var (
	newElector   = batontest.NewElector
	campaign     = batontest.Campaign
	mustCampaign = batontest.MustCampaign
	shardNames   = batontest.ShardNames
	waitHeld     = batontest.WaitHeld
)
