-- volua: the module scripts get from require "volua" (also the global `vol`).
-- The C core provides tensors and ops; this file adds the Lua-side helpers.
local core = require "volua.core"

local vol = core
vol._VERSION = "volua 0.1"

return vol
