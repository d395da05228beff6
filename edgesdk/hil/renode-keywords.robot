*** Settings ***
Documentation     Renode's keywords on edgesdk's built-in emulator (edgesdk/hil/keywords.py).
...
...               The suites in edgesdk/hil/suites/ import `Resource ${RENODEKEYWORDS}`. Under `renode-test` that
...               variable names Renode's own renode-keywords.robot; with plain `robot` the suites' default
...               points here, so the same .robot files run on both.
Library           edgesdk.hil.keywords.RenodeKeywords
