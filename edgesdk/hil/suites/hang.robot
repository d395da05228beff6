*** Settings ***
Documentation     Hang detection: a firmware that stops making progress is caught by the suites' time limit
...               (RUN_TIMEOUT virtual seconds, the same limit inference.robot passes within) instead of
...               blocking the run.
Resource          ${RENODEKEYWORDS}
Resource          edgesdk.resource
Variables         ${BUILD}/hil/variables.py
Suite Setup       Setup
Suite Teardown    Teardown
Test Setup        Reset Emulation
Test Teardown     Test Teardown

*** Variables ***
${RENODEKEYWORDS}    ${CURDIR}/../renode-keywords.robot

*** Test Cases ***
Hung Firmware Is Detected By The Time Limit
    Create Board With Firmware
    # `j .` over the model's entry point: the firmware boots, then loops forever inside the inference.
    Execute Command                   sysbus WriteDoubleWord ${HANG_ADDRESS} ${JUMP_TO_SELF}
    Start Emulation
    Firmware Should Print Its Banner
    Run Keyword And Expect Error      *Terminal tester failed*
    ...                               Wait For Line On Uart    edgesdk: run    timeout=${RUN_TIMEOUT}
    Should Not Be In Log              firmware exited with code    timeout=0
