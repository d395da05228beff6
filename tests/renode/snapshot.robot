*** Settings ***
Documentation     Renode snapshots of an edgesdk platform (issue 12 item 16), for tests/test_renode_real.py.
...
...               renode-test --variable BUILD:OUT --variable SUITES:edgesdk/hil/suites
...                           --variable PERIPHERAL:sysbus.npu0 --variable REGISTER:0x90
...                           --variable SNAPSHOT:/tmp/x.save tests/renode/snapshot.robot
...
...               The first test saves the emulation after a run, loads it and reads a counter of the
...               target's peripheral back; the second fails on purpose, so that renode-test's teardown saves
...               its failure snapshot (which failed with native state in the peripherals).
Resource          ${RENODEKEYWORDS}
Resource          ${SUITES}/edgesdk.resource
Variables         ${BUILD}/hil/variables.py
Suite Setup       Setup
Suite Teardown    Teardown
Test Setup        Reset Emulation
Test Teardown     Test Teardown

*** Test Cases ***
Peripheral State Survives Save And Load
    Create Board With Firmware
    Start Emulation
    Wait For Line On Uart             edgesdk: run ok
    Firmware Should Exit With Code    0
    ${before}=                        Read Counter
    Should Be True                    ${before} > 0    the build's run left its count in ${PERIPHERAL} ${REGISTER}
    Execute Command                   Save @${SNAPSHOT}
    Execute Command                   Clear
    Execute Command                   Load @${SNAPSHOT}
    Execute Command                   mach set 0
    ${after}=                         Read Counter
    Should Be Equal As Integers       ${after}    ${before}

Failing Test Saves The Emulation
    Create Board With Firmware
    Start Emulation
    Wait For Line On Uart             edgesdk: run ok
    Fail                              On purpose: renode-test saves the emulation when a test fails.

*** Keywords ***
Read Counter
    ${text}=      Execute Command    ${PERIPHERAL} ReadDoubleWord ${REGISTER}
    ${value}=     Evaluate           int("""${text}""".strip(), 0)
    RETURN        ${value}
