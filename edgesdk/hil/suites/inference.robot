*** Settings ***
Documentation     Inference: the firmware runs the model on the inputs embedded by `edgesdk hil` and prints
...               each output over the UART; every byte must equal the reference output (LiteRT's
...               BUILTIN_REF kernels, or TFLite Micro for a --rounding tflm build) for those inputs.
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
Model Outputs On The UART Equal The Reference
    Create Board With Firmware
    Start Emulation
    Firmware Should Print Its Banner
    # One line per output, "edgesdk: output K <hex bytes>", matched whole (anchored regex).
    FOR    ${line}    IN    @{EXPECTED_OUTPUT_LINES}
        Wait For Line On Uart    ^${line}$    treatAsRegex=true
    END
    Wait For Line On Uart             edgesdk: run ok
    Firmware Should Exit With Code    0
