-- Argo CD health check of convoy's kinds (GitSource, Package, ObjectDeployment and
-- HostedClusterPackage of convoy.dev/v1alpha1), from the kstatus conditions every convoy object
-- has: Ready, Reconciling and Stalled.
--   Suspended    spec.paused is true: convoy applies no new revision.
--   Progressing  convoy has not observed the latest spec yet, or Reconciling is True (a rollout
--                or an apply in progress, a retry after a transient failure).
--   Degraded     Stalled is True (only a change of the object or of Git can fix it), or Ready
--                is False while nothing reconciles.
--   Healthy      Ready is True.
local hs = { status = "Progressing", message = "Waiting for convoy to reconcile the object" }

local function condition(name)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == name then
      return c
    end
  end
  return nil
end

local function message(c, default)
  if c ~= nil and c.message ~= nil and c.message ~= "" then
    return c.message
  end
  return default
end

if obj.spec ~= nil and obj.spec.paused == true then
  hs.status = "Suspended"
  hs.message = message(condition("Ready"), "Paused: spec.paused is true")
  return hs
end
if obj.status == nil then
  return hs
end
local generation = obj.metadata.generation
if generation ~= nil and (obj.status.observedGeneration == nil or obj.status.observedGeneration < generation) then
  return hs
end

local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = message(stalled, "Stalled")
  return hs
end
local ready = condition("Ready")
if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = message(ready, "Ready")
  return hs
end
local reconciling = condition("Reconciling")
if reconciling ~= nil and reconciling.status == "True" then
  hs.message = message(reconciling, hs.message)
  return hs
end
if ready ~= nil and ready.status == "False" then
  hs.status = "Degraded"
  hs.message = message(ready, "Not ready")
end
return hs
